// Types of acks.js, for the unit test (test/unit/bench-acks.test.ts).
export interface AckableDelivery {
  fields: {deliveryTag: number};
}
export interface AckChannel<M extends AckableDelivery> {
  ack(message: M, allUpTo?: boolean): void;
}
export function orderedAcker<M extends AckableDelivery>(
  ch: AckChannel<M>,
): {
  received(m: M): void;
  settle(msgs: M[]): void;
};
