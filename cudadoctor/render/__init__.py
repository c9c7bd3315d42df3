"""Renderers turn a report into text, JSON or Markdown; they never collect or decide anything."""
