module github.com/frond-id/frond

go 1.26
