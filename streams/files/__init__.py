"""Files the commands read and write: event logs, complete-or-nothing outputs and exported run directories."""
