"""The JSON API under ``/api/``: ``views`` (parsing, serialization, one decorator for
authentication, methods and service errors) and ``urls`` (its routes). Rules live in
``dashboard.services``, reads in ``dashboard.selectors``.
"""
