-- Placeholder: this migration number is reserved; it changes nothing yet.
SELECT 1;
