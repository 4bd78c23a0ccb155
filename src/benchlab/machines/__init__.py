"""The fleet's machines: onboarding, remote specs, and importing existing results."""
