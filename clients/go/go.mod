module librarian-svc/clients/go

go 1.19
