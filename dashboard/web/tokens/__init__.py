"""The Tokens page, opened from the account menu: a user's API tokens (everyone's for an Admin).

* ``forms``: the new-token form (name, scopes, days until it expires);
* ``views``: the list with the form, creation (the token's text shown once) and revocation.
"""
