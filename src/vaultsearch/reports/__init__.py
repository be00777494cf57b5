"""Markdown reports rendered from Jinja2 templates: what an agent writes up from search."""
