"""Deployment support: work pools and suites. The deployments themselves are in prefect.yaml."""
