"""IAM drivers' lifecycle hooks: runtime identities issued to workloads and revoked before
they stop (``identities``)."""
