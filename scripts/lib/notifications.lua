-- wrk script for scripts/bench-purchases notifications: POSTs App Store notifications, each a
-- different one (its own notificationUUID and transaction), signed beforehand by the bench's PKI.
--
-- BENCH_BODIES names a file of request bodies, one per line; of the lines from BENCH_FROM to
-- BENCH_TO (0-based, the end excluded), thread i of n sends the lines i, i + n, ... in turn,
-- wrapping around (a body sent again is a duplicate: answered, not stored again, so the bench
-- counts what the store holds, not the answers). Counts answers by status.

local path = os.getenv("BENCH_PATH")
local headers = { ["Content-Type"] = "application/json" }
local threads = {}
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("id", counter)
    table.insert(threads, thread)
end

statuses = {}  -- global: done() reads it from each thread with thread:get
local bodies = {}
local next_body = 1

function init(args)
    statuses = {}
    local total = tonumber(os.getenv("BENCH_THREADS") or "1")
    local first = tonumber(os.getenv("BENCH_FROM") or "0")
    local last = tonumber(os.getenv("BENCH_TO") or "1000000000")
    local line_number = 0
    for line in io.lines(os.getenv("BENCH_BODIES")) do
        if line_number >= first and line_number < last and line_number % total == id - 1 then table.insert(bodies, line) end
        line_number = line_number + 1
    end
end

function request()
    local body = bodies[next_body]
    next_body = next_body % #bodies + 1
    return wrk.format("POST", path, headers, body)
end

function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
    local totals = {}
    for _, thread in ipairs(threads) do
        for status, count in pairs(thread:get("statuses")) do totals[status] = (totals[status] or 0) + count end
    end
    for status, count in pairs(totals) do io.write(string.format("status %d: %d\n", status, count)) end
end
