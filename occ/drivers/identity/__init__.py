"""Identity providers people sign in with: OpenID Connect issuers found by their discovery
document, and the GitHub and Google presets (``providers``); the authorization-code flow with
PKCE against one of them (``oidc``)."""
