import Anthropic from '@anthropic-ai/sdk';
import { useDropInApiOf, type DropInApiOf, type DropInApiOptions, type DropInProvider } from './dropin-api';

/** `POST /v1/messages` through the Anthropic SDK (it adds `/v1/messages` to the API's address). */
export const ANTHROPIC_DROP_IN: DropInProvider<Anthropic> = {
  protocol: 'anthropic',
  baseURL: (address) => address,
  client: (options) => new Anthropic(options),
};

export type AnthropicDropInApi = DropInApiOf<Anthropic>;

export function useAnthropicDropInApi(options: DropInApiOptions = {}): AnthropicDropInApi {
  return useDropInApiOf(ANTHROPIC_DROP_IN, options);
}
