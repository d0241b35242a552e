package cosidplay

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisMachine is cosid-spring-redis's SpringRedisMachineIdDistributor
// (3.2.1): its scripts, run with KEYS = ["{namespace}"] and its arguments.
type RedisMachine struct {
	C          *redis.Client
	Namespace  string
	MachineBit int
	SafeGuard  time.Duration
}

// The helpers every script of CosId's defines.
const luaState = `
local stateDelimiter = "|";
local function convertStingToState(machineState)
    local splitIdx = string.find(machineState, stateDelimiter, 1);
    local machineId = string.sub(machineState, 1, splitIdx - 1);
    local timestamp = string.sub(machineState, splitIdx + 1, -1);
    return { tonumber(machineId), tonumber(timestamp) }
end
local function convertStateToString(machineId, timestamp)
    return tostring(machineId) .. stateDelimiter .. tostring(timestamp);
end
`

// machine_id_distribute.lua.
var distributeLua = redis.NewScript(luaState + `
local keyPrefix = 'cosid' .. ':';
local namespace = KEYS[1];
local instanceId = ARGV[1];
local maxMachineId = tonumber(ARGV[2]);
local currentStamp = tonumber(ARGV[3]);
local safeGuardAt = tonumber(ARGV[4]);
local instanceIdxKey = keyPrefix .. namespace .. ':itc_idx';
local machineIdAdderKey = keyPrefix .. namespace .. ':adder';
local instanceRevertKey = keyPrefix .. namespace .. ':revert';
local function setState(machineId, lastStamp)
    local machineState = convertStateToString(machineId, lastStamp);
    redis.call('hset', instanceIdxKey, instanceId, machineState);
end
local function moveRevertToCurrent(machineId, lastStamp)
    if lastStamp < currentStamp then
        lastStamp = currentStamp;
    end
    setState(machineId, lastStamp);
    redis.call('hdel', instanceRevertKey, machineId)
    return { machineId, lastStamp }
end
local function moveRecyclableToCurrent(recyclableInstanceId, machineId)
    redis.call('hdel', instanceIdxKey, recyclableInstanceId);
    setState(machineId, currentStamp);
    return { machineId, currentStamp }
end
local machineState = redis.call('hget', instanceIdxKey, instanceId)
if machineState then
    local states = convertStingToState(machineState);
    local machineId = states[1];
    local lastStamp = states[2];
    if lastStamp < currentStamp then
        lastStamp = currentStamp;
    end
    setState(machineId, lastStamp);
    return { machineId, lastStamp }
end
local machineData = redis.call('hgetall', instanceRevertKey);
if #machineData > 0 then
    local machineId = tonumber(machineData[1]);
    local lastStamp = tonumber(machineData[2]);
    return moveRevertToCurrent(machineId, lastStamp)
end
local lastMachineId = redis.call('get', machineIdAdderKey)
if not lastMachineId then
    lastMachineId = -1;
    redis.call('set', machineIdAdderKey, lastMachineId)
end
lastMachineId = tonumber(lastMachineId);
if lastMachineId < maxMachineId then
    local machineId = redis.call('incr', machineIdAdderKey);
    setState(machineId, currentStamp);
    return { machineId, currentStamp };
end
local instanceData = redis.call('hgetall', instanceIdxKey);
for idx, val in ipairs(instanceData) do
    if idx % 2 == 1 then
        local eachInstanceId = val;
        local eachMachineStateStr = instanceData[idx + 1];
        local eachMachineState = convertStingToState(eachMachineStateStr);
        local eachMachineId = eachMachineState[1];
        local eachLastStamp = eachMachineState[2];
        if eachLastStamp <= safeGuardAt then
            return moveRecyclableToCurrent(eachInstanceId, eachMachineId);
        end
    end
end
return { -1, -1 };
`)

// machine_id_guard.lua (and machine_id_revert_stable.lua, the same body).
var guardLua = redis.NewScript(luaState + `
local namespace = KEYS[1];
local instanceId = ARGV[1];
local currentStamp = ARGV[2];
local instanceIdxKey = 'cosid' .. ':' .. namespace .. ':itc_idx';
local machineState = redis.call('hget', instanceIdxKey, instanceId)
if machineState then
    local states = convertStingToState(machineState)
    local machineId = states[1];
    redis.call('hset', instanceIdxKey, instanceId, convertStateToString(machineId, currentStamp));
    return 1;
end
return 0;
`)

// machine_id_revert.lua.
var revertLua = redis.NewScript(luaState + `
local namespace = KEYS[1];
local instanceId = ARGV[1];
local currentStamp = ARGV[2];
local instanceIdxKey = 'cosid' .. ':' .. namespace .. ':itc_idx';
local instanceRevertKey = 'cosid' .. ':' .. namespace .. ':revert';
local machineState = redis.call('hget', instanceIdxKey, instanceId)
if machineState then
    redis.call('hdel', instanceIdxKey, instanceId);
    local states = convertStingToState(machineState);
    local machineId = states[1];
    redis.call('hset', instanceRevertKey, machineId, currentStamp);
    return 1;
end
return 0;
`)

func (m RedisMachine) keys() []string { return []string{"{" + m.Namespace + "}"} }

// Distribute is distributeRemote: machine ID and last stamp, {-1,-1} an overflow.
func (m RedisMachine) Distribute(ctx context.Context, instance string, stable bool) (int64, int64, error) {
	now := time.Now().UnixMilli()
	at := int64(0)
	if !stable {
		at = max(now-m.SafeGuard.Milliseconds(), 0)
	}
	res, err := distributeLua.Run(ctx, m.C, m.keys(), instance, strconv.Itoa(^(-1 << m.MachineBit)), strconv.FormatInt(now, 10), strconv.FormatInt(at, 10)).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if res[0] < 0 {
		return 0, 0, fmt.Errorf("%w: InstanceId:[%s]", ErrMachineOverflow, instance)
	}
	return res[0], res[1], nil
}

// Guard is guardRemote: 0 is MachineIdLostException.
func (m RedisMachine) Guard(ctx context.Context, instance string, id, last int64) error {
	n, err := guardLua.Run(ctx, m.C, m.keys(), instance, strconv.FormatInt(last, 10)).Int()
	if err == nil && n == 0 {
		err = fmt.Errorf("%w: machine id[%d] of instance[%s]", ErrMachineLost, id, instance)
	}
	return err
}

// Revert is revertRemote (the stable script is the guard's body).
func (m RedisMachine) Revert(ctx context.Context, instance string, stable bool, last int64) error {
	script := revertLua
	if stable {
		script = guardLua
	}
	return script.Run(ctx, m.C, m.keys(), instance, strconv.FormatInt(last, 10)).Err()
}
