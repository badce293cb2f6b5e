"""``ember.utils``: data loading (``ember.utils.data``) and other utilities."""
