"""The operator's client: ``occ`` commands that talk to the REST API over HTTP.

Standard library HTTP only (``occ.client.wire``: a socket, or ``urllib`` through a proxy), with
the key from a profile or ``OCC_API_KEY``. It never imports the core (state, controller,
database, reconcile, tasks, web): what it knows of occ is what the API answers. The key is sent
as a Bearer header and never printed.
"""
