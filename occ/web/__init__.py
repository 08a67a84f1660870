"""The HTTP API: authenticate, declare the permission, call an admission use case, render."""
