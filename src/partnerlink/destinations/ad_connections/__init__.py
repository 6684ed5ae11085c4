"""Ad platforms connected by signing in (CONTRACT.md §14): a merchant's Meta or Google
connection (the token sealed with the service key), the `state` of a sign-in under way,
the platforms' sign-in and list calls, the merchant API and the callback pages."""
