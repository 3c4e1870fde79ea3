"""Serving a class: the web server, its limits, what it offers, pages built ahead, caches shared by sessions, memory."""
