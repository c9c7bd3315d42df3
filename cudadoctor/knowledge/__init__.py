"""Knowledge tables, each with its source. A wrong table is a wrong diagnosis: cite, don't guess."""
