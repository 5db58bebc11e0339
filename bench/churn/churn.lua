-- bench/churn/churn.lua: a wrk script that churns cachet's store (issue 19).
--
-- Keys k in [0, NKEYS) each have a fixed body size, log-uniform from 100 B
-- to 1 MiB (so the key space is many times cache.size: inserts evict), a
-- short max-age (2-31 s: objects expire and are fetched again), and one key
-- in six is chunked (the store grows those by segments instead of one block).
-- Of the requests, 8 % carry "Cache-Control: no-cache" (the stored object is
-- replaced) and 2 % are PURGE (dropped). Env: CHURN_KEYS (default 4000).
local nkeys = tonumber(os.getenv("CHURN_KEYS") or "4000")
local counter = 0

local function size_of(k)
    -- a fixed pseudo-random draw per key: log-uniform in [100, 1048576]
    local x = ((k * 2654435761) % 4294967296) / 4294967296
    return math.floor(100 * (10485.76 ^ x))
end

local function path_of(k)
    local p = "/gen?k=" .. k .. "&size=" .. size_of(k) ..
              "&cache-control=max-age%3D" .. (2 + k % 30)
    if k % 6 == 0 then p = p .. "&chunked=1" end
    return p
end

function setup(thread)
    thread:set("seed", counter)
    counter = counter + 1
end

function init(args)
    math.randomseed(os.time() + (seed or 0) * 7919)
end

function request()
    local k = math.random(0, nkeys - 1)
    local r = math.random(100)
    if r <= 2 then
        return wrk.format("PURGE", path_of(k))
    elseif r <= 10 then
        return wrk.format("GET", path_of(k), { ["Cache-Control"] = "no-cache" })
    end
    return wrk.format("GET", path_of(k))
end
