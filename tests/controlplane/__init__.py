"""The real-control-plane suite (`make e2e`): it needs Go, so `make test` never collects it."""
