"""Pure helpers on plain dicts that mirror upstream Kubernetes rules."""
