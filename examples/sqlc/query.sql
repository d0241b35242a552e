-- name: CreateOrder :exec
INSERT INTO orders (id, item) VALUES (?, ?);

-- name: GetOrder :one
SELECT id, item FROM orders WHERE id = ?;
