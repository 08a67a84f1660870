"""The web console at ``/console``: server-rendered pages (Jinja) over the same read use cases
as the API, and a small script of its own for the live parts and the actions, which it sends
to the JSON API with the session cookie and its CSRF token, so every change goes through the
API's use cases and IAM (docs/console.md)."""
