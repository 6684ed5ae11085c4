"""Shared machinery of the HTML pages: templates, signed form tokens, CSRF, cookies, CSP."""
