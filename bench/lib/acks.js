// Acknowledging AMQP deliveries in batches without acking one before its work is durable.

/**
 * Acks deliveries of one channel in delivery order: `settle(msgs)` marks them done and acks, with
 * multiple=true, the longest run of settled deliveries at the front (one frame for many). A
 * delivery is never acked before it is settled, whatever order the batches finish in.
 */
export function orderedAcker(ch) {
  const pending = []; // deliveries in arrival order
  let head = 0;
  const settled = new Set();
  return {
    received(m) {
      pending.push(m);
    },
    settle(msgs) {
      for (const m of msgs) settled.add(m.fields.deliveryTag);
      let last;
      while (head < pending.length && settled.has(pending[head].fields.deliveryTag)) {
        settled.delete(pending[head].fields.deliveryTag);
        last = pending[head++];
      }
      if (head > 4096) {
        pending.splice(0, head);
        head = 0;
      }
      if (last) ch.ack(last, true);
    },
  };
}
