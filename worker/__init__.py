"""The worker pool: owns orders, runs plugins, writes retry rows."""
