"""Everything that runs in Lambda. Never imports aws_cdk; this folder is the only code asset."""
