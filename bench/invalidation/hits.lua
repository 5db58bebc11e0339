-- bench/invalidation/hits.lua: hits on objects that neither the purges nor
-- the bans of the run touch, spread over the whole store; the same URLs
-- fill.lua stored. Round r of inval.sh purges tag g(9-r) (k mod 10 == 9-r)
-- and bans k mod 100 == 10+r, for r below INVAL_ROUNDS.
local n = tonumber(os.getenv("INVAL_N") or "1000000")
local rounds = tonumber(os.getenv("INVAL_ROUNDS") or "3")
local state = 0
function init(args) state = math.random(1, 1000000007) end
function request()
    local k
    repeat
        state = (state * 1103515245 + 12345) % 2147483648
        k = (state % n) + 1
    until k % 10 < 10 - rounds and (k % 100 < 10 or k % 100 >= 10 + rounds)
    local tags = "g" .. (k % 10)
    for i = 1, 9 do tags = tags .. "%20u" .. k .. "x" .. i end
    return wrk.format("GET", "/gen?size=1024&cache-control=max-age%3D36000&k=" .. k ..
                      "&hdr=Surrogate-Key%3A%20" .. tags)
end
