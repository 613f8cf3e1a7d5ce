FROM scratch
LABEL claw.describe="/meta/ops.json"
