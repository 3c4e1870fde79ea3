"""Feedback Lab: the web app, its pages and its command line."""
