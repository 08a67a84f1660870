"""Admission use cases: validate, authorize, then write state + audit + work in one transaction.

One module per resource. Called by web and cli with a ``Database``; each use case opens its
own transaction and returns the state layer's frozen values (camelCase is the web layer's
job); it defines a type of its own only for what is not an entity (a deployment's status, a
new API key with its one-time plaintext). Never calls a Compute Driver or a broker. A denial
is audited in its own short transaction, after the admission transaction rolled back, and
creates no work.
"""
