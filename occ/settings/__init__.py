"""Settings: the one reader of the environment and the optional YAML file."""
