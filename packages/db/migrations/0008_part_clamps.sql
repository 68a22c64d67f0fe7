-- Clamped parts (core fit.ts): what the context view shows in place of a part that alone would
-- not fit the window, written with the compaction that clamps it. `parts.clamped` is set on the
-- few clamped parts, so the view's readers look up `part_clamps` only for them. A compaction's
-- `changed_seq` records a covered message that changed while it ran (a tool result PATCHed in),
-- so its finalize does not move the boundary past a result the summary never saw.
CREATE TABLE "part_clamps" (
	"part_pk" bigint PRIMARY KEY NOT NULL,
	"session_pk" bigint NOT NULL,
	"clamped_by" text NOT NULL,
	"clamped_at" timestamp with time zone NOT NULL,
	"field" text NOT NULL,
	"tokens" integer NOT NULL,
	"output_tokens" integer NOT NULL,
	"text" text,
	"tool_input" jsonb,
	"tool_output" text,
	"tool_error" text
);
--> statement-breakpoint
ALTER TABLE "parts" ADD COLUMN "clamped" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "changed_seq" integer;--> statement-breakpoint
ALTER TABLE "part_clamps" ADD CONSTRAINT "part_clamps_part_pk_parts_pk_fk" FOREIGN KEY ("part_pk") REFERENCES "public"."parts"("pk") ON DELETE cascade ON UPDATE no action;