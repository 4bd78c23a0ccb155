"""The site's pages, a module each: a page is a function of the site context
(`publish.context.SiteContext`) that writes its files into it."""
