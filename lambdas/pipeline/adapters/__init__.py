"""Small wrappers around the AWS calls the handlers make; the only place boto3 appears."""
