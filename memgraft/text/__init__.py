"""Documents in, token-exact chunks out."""
