-- tests/soak/soak.lua: the soak's load mix for wrk (issue 19). Per request:
-- 50 % hits on a small hot set, 10 % misses (new keys, stored), 8 % no-store,
-- 10 % 100 KiB objects, 6 % 404/500, 6 % chunked, 5 % trickled bodies,
-- 5 % cut-off bodies (the origin closes mid-body). wrk does not check bodies:
-- the soak's checker does (tests/soak/check.py).
local n = 0
function setup(thread) thread:set("tid", n); n = n + 1 end
function init(args) math.randomseed(os.time() + (tid or 0) * 7919); seq = 0 end
local function pick()
    seq = seq + 1
    local r = math.random(100)
    if r <= 50 then return "/gen?hot=" .. math.random(0, 199) .. "&size=" .. (512 + 37 * (r % 20)) .. "&cache-control=max-age%3D20"
    elseif r <= 60 then return "/gen?miss=" .. tid .. "-" .. seq .. "&size=2000&cache-control=max-age%3D5"
    elseif r <= 68 then return "/gen?size=1500&cache-control=no-store"
    elseif r <= 78 then return "/gen?big=" .. math.random(0, 399) .. "&size=102400&cache-control=max-age%3D30"
    elseif r <= 81 then return "/gen?status=404&cache-control=max-age%3D10&k=" .. math.random(0, 49)
    elseif r <= 84 then return "/gen?status=500&k=" .. math.random(0, 49)
    elseif r <= 90 then return "/gen?chunked=1&size=30000&cache-control=max-age%3D15&k=" .. math.random(0, 99)
    elseif r <= 95 then return "/gen?trickle=20&trickle-size=512&size=4096&cache-control=no-store&k=" .. math.random(0, 9)
    end
    return "/gen?close=mid&size=20000&cache-control=max-age%3D30&k=" .. math.random(0, 99)
end
function request() return wrk.format("GET", pick()) end
