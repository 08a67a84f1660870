"""Celery entry points: the app, the beat schedule and the nudge; task bodies call the core."""
