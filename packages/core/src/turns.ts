/** An assistant turn is over: it finished for any reason but to run tool calls. */
export const finishesTurn = (role: string, finish: string | null | undefined) =>
  role === 'assistant' && finish !== null && finish !== undefined && finish !== 'tool-calls';
