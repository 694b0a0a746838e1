// User images as the OpenAI endpoints take them: one URL string, inline bytes as a data URL.
import type { ModelImage } from "./types.js";

export function imageUrl(image: ModelImage): string {
  return image.type === "url" ? image.url : `data:${image.mediaType};base64,${image.data}`;
}
