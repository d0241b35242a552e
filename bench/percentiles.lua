-- wrk script: print latency percentiles in microseconds, including p99.9.
done = function(summary, latency, requests)
  io.write(string.format("PCT %d %d %d %d\n", latency:percentile(50), latency:percentile(99),
    latency:percentile(99.9), latency.max))
end
