"""The dashboard: server-rendered pages with htmx fragments, for end users and organization admins."""
