-- wrk script: POST batches of fresh perturbed reports to .../v1/collections/{name}/reports
-- and print a JSON summary for bench/ingestion.py (bench/_wrk.py runs it).
--
--   wrk -t1 -c16 -d10s -s bench/wrk/reports.lua URL -- CONFIG_HASH BITS BATCH TAG
--
-- CONFIG_HASH: the collection's config hash; BITS: one valid packed report, canonical
-- base64 (every report of the run carries it); BATCH: reports per request; TAG: four
-- characters that no other wrk process of the same collection uses.
--
-- Every report gets a new id (a repeated id is answered "duplicate" and takes another
-- path in the server): 10 random characters first, so that the ids land all over the
-- reports table's key order as random device ids do, then TAG, the thread's number and
-- the thread's report counter, which make the id unique. 22 characters of
-- [A-Za-z0-9_-], the length and alphabet of the SDK's ids (ldp_shared.wire.new_report_id).
--
-- done() prints one line "WRK_JSON {...}": requests answered, duration, non-2xx
-- answers, socket errors, reports sent, latency percentiles in ms.

local ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("thread_number", #threads)
end

local function digits(n, width)
   local out = {}
   for i = width, 1, -1 do
      local d = n % 64
      out[i] = ALPHABET:sub(d + 1, d + 1)
      n = (n - d) / 64
   end
   return table.concat(out)
end

local function random_chars(count)
   local out = {}
   for i = 1, count do
      local d = math.random(64)
      out[i] = ALPHABET:sub(d, d)
   end
   return table.concat(out)
end

function init(args)
   local config_hash, bits = args[1], args[2]
   batch = tonumber(args[3])
   local tag = args[4]
   if not (config_hash and bits and batch and tag and #tag == 4) then
      error("arguments: CONFIG_HASH BITS BATCH TAG (four characters)")
   end
   math.randomseed(os.time() * 1000 + thread_number)
   middle = tag .. digits(thread_number, 2)
   tail = '","config_hash":"' .. config_hash .. '","bits":"' .. bits .. '"}'
   sent, non_2xx = 0, 0
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
end

function request()
   local items = {}
   for k = 1, batch do
      sent = sent + 1
      items[k] = '{"id":"' .. random_chars(10) .. middle .. digits(sent, 6) .. tail
   end
   return wrk.format(nil, nil, nil, '{"reports":[' .. table.concat(items, ",") .. "]}")
end

function response(status, headers, body)
   if status < 200 or status > 299 then
      non_2xx = non_2xx + 1
   end
end

function done(summary, latency, requests)
   local reports_sent, answered_non_2xx = 0, 0
   local per_request = threads[1]:get("batch")
   for _, thread in ipairs(threads) do
      reports_sent = reports_sent + (thread:get("sent") or 0)
      answered_non_2xx = answered_non_2xx + (thread:get("non_2xx") or 0)
   end
   local e = summary.errors
   io.write(string.format(
      'WRK_JSON {"requests":%d,"duration_s":%.6f,"bytes_read":%d,"non_2xx":%d,'
         .. '"socket_errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},'
         .. '"reports_sent":%d,"batch":%d,'
         .. '"latency_ms":{"mean":%.3f,"p50":%.3f,"p90":%.3f,"p99":%.3f,"max":%.3f}}\n',
      summary.requests, summary.duration / 1e6, summary.bytes, answered_non_2xx,
      e.connect, e.read, e.write, e.timeout, reports_sent, per_request,
      latency.mean / 1e3, latency:percentile(50) / 1e3, latency:percentile(90) / 1e3,
      latency:percentile(99) / 1e3, latency.max / 1e3))
end
