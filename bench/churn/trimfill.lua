-- bench/churn/trimfill.lua (wrk -t1): objects k = 1..TRIM_N, each a fixed
-- size from 1 KiB to 32 KiB (heap-sized bodies, below the memfd threshold),
-- an hour fresh, all tagged "fill" (Surrogate-Key) so that one purge by tag
-- drops them and cachet logs its time. The counter lives in the one
-- thread's Lua state.
local n = tonumber(os.getenv("TRIM_N") or "30000")
local k = 0
function request()
    k = k % n + 1
    local size = 1024 + (k * 2654435761) % (31 * 1024)
    return wrk.format("GET", "/gen?k=" .. k .. "&size=" .. size .. "&cache-control=max-age%3D3600" ..
                      "&hdr=Surrogate-Key%3A%20fill")
end
