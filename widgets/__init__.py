"""Reusable pieces of the app's pages."""
