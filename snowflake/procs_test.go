package snowflake

import "runtime"

func benchProcs() int { return runtime.GOMAXPROCS(0) }
