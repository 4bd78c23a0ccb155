"""Questions asked of the public catalog: filters, the verbs, `bench show`, and rendering."""
