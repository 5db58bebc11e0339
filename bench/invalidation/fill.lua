-- bench/invalidation/fill.lua (run with wrk -t1): each request a new object
-- 1..N with ten tags, "g<K mod 10>" (each g tag shared by N/10 objects) and
-- nine of its own. One thread: the counter lives in that thread's Lua state.
local n = tonumber(os.getenv("INVAL_N") or "1000000")
local k = 0
function request()
    k = k % n + 1
    local tags = "g" .. (k % 10)
    for i = 1, 9 do tags = tags .. "%20u" .. k .. "x" .. i end
    return wrk.format("GET", "/gen?size=1024&cache-control=max-age%3D36000&k=" .. k ..
                      "&hdr=Surrogate-Key%3A%20" .. tags)
end
