"""marshmallow schemas of the API: closed request bodies, camelCase representations."""
