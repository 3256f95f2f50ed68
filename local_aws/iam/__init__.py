"""AWS's authorisation, played by the local runtime: every function calls AWS under the role its
template gives it, and the services the runtime plays (Lambda's poller, API Gateway, EventBridge,
CloudWatch's alarm actions) act as AWS's own service principals against the template's resource
policies. A call a policy does not allow is refused with the answer AWS gives.

- documents.py: policy statements and how actions, resources and principals match;
- conditions.py: the condition operators;
- evaluation.py: AWS's evaluation logic for one request (explicit deny, identity and resource
  policies, a KMS key's policy);
- asks.py: what IAM evaluates for one API call (the action and resource of each item of a
  transaction or batch, the index a query reads);
- template.py: the roles, sessions and resource policies a deployed template defines;
- enforcer.py: the botocore hook that refuses what is not allowed, and the register of who holds
  which credentials;
- ledger.py: which function used which grant, kept across runs to compare with what is granted.
"""
