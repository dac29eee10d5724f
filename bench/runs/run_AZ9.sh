# run AZ9: the GPU suite on the session's final code (the shape check in dfcclCommInit, the tcp
# segments left to the user when either is set)
. bench/runs/net_runs.sh
STAGE_TIMEOUT=300 stage test
