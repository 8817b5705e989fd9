-- wrk script for scripts/bench-ingest: POSTs realistic invalid-identifier reports.
--
-- Each request is a new report (its own reportId) from one of 50,000 installs, naming one
-- or two of the app's identifiers invalid out of the eight it requested, with the platform,
-- version, environment, storefront and feed revision a real client sends. Counts the
-- answers by status per thread, and prints the totals when wrk is done.

local app = os.getenv("BENCH_APP") or "com.example.app"
local path = "/v1/apps/" .. app .. "/invalid-identifiers"
local headers = { ["Content-Type"] = "application/json" }
local products = {}
for i = 1, 8 do products[i] = string.format('"%s.product%d"', app, i) end
local requested = "[" .. table.concat(products, ",") .. "]"
local platforms = { "iOS", "iOS", "iOS", "macOS", "visionOS" }
local environments = { "production", "production", "production", "production", "sandbox" }
local storefronts = { "USA", "FRA", "DEU", "JPN", "GBR", "BRA" }

local threads = {}
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("id", counter)
    table.insert(threads, thread)
end

statuses = {}  -- global: done() reads it from each thread with thread:get
local sequence = 0
local thread_id

function init(args)
    statuses = {}
    thread_id = id
    math.randomseed(os.time() * 1000 + id)
end

local function hex(n)
    local digits = {}
    for i = 1, n do digits[i] = string.format("%x", math.random(0, 15)) end
    return table.concat(digits)
end

function request()
    sequence = sequence + 1
    -- Unique per run: random high bits, then the thread and a sequence number.
    local report_id = string.format("%s-%s-4%s-a%s-%04x%08x", hex(8), hex(4), hex(3), hex(3), thread_id, sequence)
    local invalid = products[math.random(1, 8)]
    if math.random() < 0.3 then invalid = invalid .. "," .. products[math.random(1, 8)] end
    local body = string.format(
        '{"invalidProductIdentifiers":[%s],"requestedProductIdentifiers":%s,"platform":"%s","appVersion":"2.%d.%d",'
            .. '"environment":"%s","storefront":"%s","feedRevision":%d,"installId":"install-%d","reportId":"%s"}',
        invalid, requested, platforms[math.random(1, #platforms)], math.random(0, 9), math.random(0, 3),
        environments[math.random(1, #environments)], storefronts[math.random(1, #storefronts)], math.random(10, 12),
        math.random(1, 50000), report_id)
    return wrk.format("POST", path, headers, body)
end

function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
    local totals = {}
    for _, thread in ipairs(threads) do
        local counts = thread:get("statuses")
        for status, count in pairs(counts) do totals[status] = (totals[status] or 0) + count end
    end
    local seconds = summary.duration / 1e6
    for status, count in pairs(totals) do
        io.write(string.format("status %d %d\n", status, count))
    end
    io.write(string.format("seconds %.3f\n", seconds))
    for _, p in ipairs({ 50, 90, 99, 99.9 }) do
        io.write(string.format("latency_p%s_ms %.3f\n", tostring(p), latency:percentile(p) / 1000))
    end
    io.write(string.format("errors %d\n", summary.errors.connect + summary.errors.read + summary.errors.write
        + summary.errors.timeout))
end
