"""The PostgreSQL store: many projects in one database, one transaction per change."""
