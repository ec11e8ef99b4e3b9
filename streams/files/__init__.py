"""Files the commands read and write: complete-or-nothing outputs and exported run directories."""
